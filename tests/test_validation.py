"""The shared setting checkers of gbrank._validation and the objectives' per-dataset cache."""

import numpy as np
import pytest

import gbrank
from gbrank._validation import InvalidParameterError, check_choice, check_float, check_int


# --------------------------------------------------------------------------- check_int
@pytest.mark.parametrize("value", [1, 7, np.int64(3), np.int32(2), np.uint8(5)])
def test_check_int_accepts_integers_and_returns_python_ints(value):
    out = check_int("k", value, min=1)
    assert out == int(value) and type(out) is int


@pytest.mark.parametrize(
    "value,kwargs,message",
    [
        (True, {"min": 1}, "k must be an integer >= 1, got True"),
        (False, {"min": 0}, "k must be an integer >= 0, got False"),
        (np.bool_(True), {"min": 1}, "k must be an integer >= 1, got "),
        (1.0, {"min": 1}, "k must be an integer >= 1, got 1.0"),
        ("3", {"min": 1}, "k must be an integer >= 1, got '3'"),
        (0, {"min": 1}, "k must be an integer >= 1, got 0"),
        (None, {"min": 1}, "k must be an integer >= 1, got None"),
        (0, {"min": 1, "optional": True}, "k must be an integer >= 1 or None, got 0"),
        (40, {"min": 0, "max": 31}, "k must be an integer in 0 .. 31, got 40"),
        (5, {"max": 4}, "k must be an integer <= 4, got 5"),
    ],
)
def test_check_int_refuses_with_a_message_naming_the_setting(value, kwargs, message):
    with pytest.raises(InvalidParameterError) as info:
        check_int("k", value, **kwargs)
    assert str(info.value).startswith(message)


def test_check_int_optional_passes_none():
    assert check_int("k", None, min=1, optional=True) is None


def test_invalid_parameter_error_is_both_value_and_type_error():
    # callers that caught either keep working
    for caught in (ValueError, TypeError):
        with pytest.raises(caught):
            check_int("k", True, min=1)


# --------------------------------------------------------------------------- check_float
@pytest.mark.parametrize("value", [0.5, 2, np.float32(1.5), np.int64(3)])
def test_check_float_accepts_finite_numbers(value):
    out = check_float("eps", value, min=0.0, strict=True)
    assert out == float(value) and type(out) is float


@pytest.mark.parametrize(
    "value,kwargs,message",
    [
        (True, {"min": 0.0, "strict": True}, "eps must be a finite number > 0, got True"),
        (0.0, {"min": 0.0, "strict": True}, "eps must be a finite number > 0, got 0.0"),
        (-1.0, {"min": 0.0}, "eps must be a finite number >= 0, got -1.0"),
        (np.nan, {"min": 0.0}, "eps must be a finite number >= 0, got nan"),
        (np.inf, {}, "eps must be a finite number, got inf"),
        ("1", {}, "eps must be a finite number, got '1'"),
    ],
)
def test_check_float_refuses_with_a_message_naming_the_setting(value, kwargs, message):
    with pytest.raises(InvalidParameterError) as info:
        check_float("eps", value, **kwargs)
    assert str(info.value) == message


def test_check_float_min_is_inclusive_unless_strict():
    assert check_float("mu", 0, min=0.0) == 0.0


# --------------------------------------------------------------------------- check_choice
def test_check_choice_lists_the_choices():
    assert check_choice("ties", "input", ("input", "random")) == "input"
    with pytest.raises(InvalidParameterError, match=r"^ties must be one of 'input', 'random', got 'best'$"):
        check_choice("ties", "best", ("input", "random"))
    with pytest.raises(InvalidParameterError, match="got 1"):
        check_choice("ties", 1, ("input", "random"))


# --------------------------------------------------------------------------- the state cache
def _queries(n_queries=60, size=40, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, n_queries * size).astype(np.float32)
    scores = rng.normal(size=labels.size)
    return labels, scores, [size] * n_queries


@pytest.mark.parametrize("make", [gbrank.listmle, gbrank.listnet, gbrank.cosine, gbrank.ndcg_boost, gbrank.wranknet])
def test_labels_changed_in_place_are_seen(make):
    """The cache must not serve the state of the old labels when the caller's array changes
    in place (the engines hand the same array at every iteration)."""
    labels, scores, group = _queries()
    assert labels.nbytes > 4096  # the word-compare path
    obj = make()
    obj.grad_hess(labels, scores, group)
    labels[::7] = 3 - labels[::7]
    got = obj.grad_hess(labels, scores, group)
    want = make().grad_hess(labels.copy(), scores, group)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_a_binding_holds_equal_values_and_not_other_dtypes_groups_or_positions():
    """A binding answers for the fields it was made from, value for value (the engines'
    calls reuse it only then): a copy holds, another dtype, group or position does not."""
    labels, _, _ = _queries()
    sizes = [40] * 60
    binding = gbrank.listmle().bind(labels, sizes)
    assert binding.holds(labels.copy(), sizes)
    assert not binding.holds(labels.astype(np.float64), sizes)
    assert not binding.holds(labels, [20] * 120)
    # odd byte counts and short arrays take np.array_equal
    odd = labels[:-1].copy()
    short = gbrank.listmle().bind(odd, [odd.size])
    assert short.holds(odd.copy(), [odd.size]) and not short.holds(odd[::-1].copy(), [odd.size])
    position = np.tile(np.arange(1, 41), 60)
    clicks = gbrank.ips_listnet().bind((labels > 2).astype(float), sizes, position=position)
    assert clicks.holds((labels > 2).astype(float), sizes, position=position.copy())
    moved = position.copy()
    moved[5] = -1
    assert not clicks.holds((labels > 2).astype(float), sizes, position=moved)
