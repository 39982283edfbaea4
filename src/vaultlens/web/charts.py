"""Small inline SVG charts, built on the server: no chart library, nothing fetched at run time."""

from __future__ import annotations

from vaultlens.web.layout import h

BAR_H = 18
LABEL_W = 180
WIDTH = 520


def bar_chart(chart_id: str, title: str, rows: list[tuple[str, int]]) -> str:
    """Horizontal bars, one per row (label, value); scales to the page width (viewBox)."""
    if not rows:
        return f'<p id="{h(chart_id)}" class="empty">{h(title)}: none.</p>'
    top = max(v for _, v in rows) or 1
    height = BAR_H * len(rows) + 4
    bars = []
    for i, (label, value) in enumerate(rows):
        y = i * BAR_H + 2
        w = max(1.0, (WIDTH - LABEL_W - 50) * value / top)
        short = label if len(label) <= 26 else label[:25] + "…"
        bars.append(
            f"<g><title>{h(label)}: {value}</title>"
            f'<text x="{LABEL_W - 6}" y="{y + 13}" text-anchor="end">{h(short)}</text>'
            f'<rect x="{LABEL_W}" y="{y + 2}" width="{w:.1f}" height="{BAR_H - 5}" rx="2"></rect>'
            f'<text x="{LABEL_W + w + 4:.1f}" y="{y + 13}">{value}</text></g>'
        )
    return (
        f'<figure><svg id="{h(chart_id)}" class="chart" role="img" aria-label="{h(title)}" '
        f'viewBox="0 0 {WIDTH} {height}" preserveAspectRatio="xMinYMin meet">{"".join(bars)}</svg>'
        f"<figcaption>{h(title)}</figcaption></figure>"
    )
