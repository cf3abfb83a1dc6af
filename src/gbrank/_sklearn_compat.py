"""scikit-learn's input validation across the supported releases (1.3 on).

``sklearn.utils.validation.validate_data`` came with scikit-learn 1.6; before it an
estimator validated its input with its own ``_validate_data`` method, whose
``force_all_finite`` 1.6 renamed ``ensure_all_finite`` (in ``check_array`` too), and whose
``cast_to_ndarray=False`` 1.6 calls ``skip_check_array=True``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_array", "validate_data"]

try:
    from sklearn.utils.validation import check_array, validate_data
except ImportError:  # scikit-learn < 1.6
    from sklearn.utils.validation import check_array as _check_array

    def check_array(array: Any, *, ensure_all_finite: bool | str = True, **check_params: Any) -> Any:  # type: ignore[no-redef]
        """``check_array`` of scikit-learn 1.6 on an older scikit-learn."""
        return _check_array(array, force_all_finite=ensure_all_finite, **check_params)

    def validate_data(  # type: ignore[no-redef]
        estimator: Any,
        X: Any = "no_validation",
        y: Any = "no_validation",
        *,
        reset: bool = True,
        ensure_all_finite: bool | str = True,
        skip_check_array: bool = False,
        **check_params: Any,
    ) -> Any:
        """``validate_data`` of scikit-learn 1.6 on an older scikit-learn."""
        if skip_check_array:
            return estimator._validate_data(X, y, reset=reset, cast_to_ndarray=False)
        return estimator._validate_data(X, y, reset=reset, force_all_finite=ensure_all_finite, **check_params)
