"""Tasks: one module per task, one registry (`breadth.data.tasks.registry`).

>>> from breadth.data.tasks import get_task
>>> get_task("countdown").levels
(1, 2, 3)
"""

from breadth.data.tasks.base import Task, TaskProperties
from breadth.data.tasks.registry import TASKS, get_task, register, synthetic_task_names

__all__ = ["TASKS", "Task", "TaskProperties", "get_task", "register", "synthetic_task_names"]
