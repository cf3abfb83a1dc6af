"""scikit-learn's input validation across the supported releases (1.3 on).

``sklearn.utils.validation.validate_data`` came with scikit-learn 1.6; before it an
estimator validated its input with its own ``_validate_data`` method, whose
``force_all_finite`` 1.6 renamed ``ensure_all_finite``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["validate_data"]

try:
    from sklearn.utils.validation import validate_data
except ImportError:  # scikit-learn < 1.6

    def validate_data(  # type: ignore[no-redef]
        estimator: Any,
        X: Any = "no_validation",
        y: Any = "no_validation",
        *,
        reset: bool = True,
        ensure_all_finite: bool | str = True,
        **check_params: Any,
    ) -> Any:
        """``validate_data`` of scikit-learn 1.6 on an older scikit-learn."""
        return estimator._validate_data(X, y, reset=reset, force_all_finite=ensure_all_finite, **check_params)
