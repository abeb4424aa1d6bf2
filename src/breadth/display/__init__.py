"""What breadth shows people, below every other layer: progress bars with ETAs (`progress`),
a grid's cells as they finish (`grid_progress`), "did you mean" (`suggestions`) and URLs as
printed and checked (`urls`). Standard library, tqdm and rich only.
"""
