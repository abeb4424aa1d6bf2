"""Generation backends behind one interface and one output schema (ARCHITECTURE.md)."""
