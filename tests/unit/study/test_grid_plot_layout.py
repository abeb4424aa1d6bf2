"""`breadth compare`'s PNGs hold their titles and legends whole, and a long legend does not
squeeze the plot: every text is inside the saved image and each panel keeps most of its width."""

from __future__ import annotations

import pandas as pd
import pytest

from breadth.study.grid_report import plot_grid  # draws with the Agg backend

LONG = {"data.source": "jsonl:/data/gsm8k/test.jsonl", "rl.max_steps": "4"}


def _runs_of_unlike_configs() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Lone runs of one cell with unlike configs: long, one-key-a-line legend labels."""
    runs = pd.DataFrame([
        {"format": "free_form", "reward": "correctness", "run_id": "a", "config": LONG,
         "curve_rl": {1: 0.2, 4: 0.4, 16: 0.6}, "curve_sft": {1: 0.1, 4: 0.3, 16: 0.5}},
        {"format": "free_form", "reward": "correctness", "run_id": "b",
         "config": {"data.source": "synthetic:arithmetic", "rl.max_steps": "100"},
         "curve_rl": {1: 0.3, 4: 0.5, 16: 0.7}, "curve_sft": {1: 0.2, 4: 0.35, 16: 0.55}},
    ])
    summary = pd.DataFrame([{"format": "free_form", "reward": "correctness", "seeds": 1,
                             "k": 16, "pass_at_1_delta": 0.1, "pass_at_kmax_delta": 0.1}])
    summary.attrs.update(model="rl", base_model="sft", k=16)
    return runs, summary


@pytest.fixture
def saved(monkeypatch):
    """Each figure plot_grid saves, with the part of it the PNG holds (in display units)."""
    # Here, not at the top: matplotlib costs about 1 CPU s, paid by each worker's collection.
    from matplotlib.figure import Figure

    figures = []
    save = Figure.savefig

    def recording_save(fig, path, **kwargs):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        tight = kwargs.get("bbox_inches") == "tight"
        area = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans) if tight else fig.bbox
        figures.append((fig, renderer, area))
        return save(fig, path, **kwargs)

    monkeypatch.setattr(Figure, "savefig", recording_save)
    return figures


def test_titles_and_legends_are_inside_the_png_and_the_plot_keeps_its_width(saved, tmp_path):
    runs, summary = _runs_of_unlike_configs()
    plot_grid(runs, summary, tmp_path)
    assert len(saved) == 2
    for fig, renderer, area in saved:
        for ax in fig.axes:
            texts = [ax.title] + ([ax.get_legend()] if ax.get_legend() else [])
            for text in texts:
                box = text.get_window_extent(renderer)
                assert area.x0 - 1 <= box.x0 and box.x1 <= area.x1 + 1, (
                    f"{type(text).__name__} runs out of the image: {box} vs {area}")
                assert area.y0 - 1 <= box.y0 and box.y1 <= area.y1 + 1
            # A legend beside the panel took half the figure; below it, the panel keeps most.
            assert ax.get_window_extent(renderer).width >= 0.6 * area.width
