"""The lessons compute what they claim (small, fast versions of each)."""
from demos import temperature


def test_temperature_table_matches_the_article():
    rows = temperature.table()
    by_T = {T: (p, h) for T, p, h in rows}
    assert [round(v, 3) for v in by_T[1.0][0]] == [0.659, 0.242, 0.099]
    assert by_T[0.2][0][0] > 0.99  # near argmax
    max_probs = [p[0] for _, p, _ in rows]
    entropies = [h for _, _, h in rows]
    assert max_probs == sorted(max_probs, reverse=True)
    assert entropies == sorted(entropies)
