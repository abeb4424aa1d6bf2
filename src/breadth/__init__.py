"""breadth: post-training research on diversity."""

__version__ = "0.1.0"
