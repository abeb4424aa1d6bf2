"""Generation backends behind one interface and one output schema (docs/design/architecture.md)."""
