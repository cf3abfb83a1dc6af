"""Sphinx configuration of the gbrank documentation.

Build: ``sphinx-build -W --keep-going -b html docs site`` (warnings are errors, so a broken
reference fails the build). The API pages are generated from the numpy-style docstrings,
whose formulas are reST ``.. math::`` blocks; the prose pages are MyST Markdown.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path

import gbrank

# objective_catalogue: the lists of objectives, written from the registry
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "gbrank"
author = "gbrank developers"
copyright = "gbrank developers"
release = gbrank.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "objective_catalogue",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]

# Every unresolved cross-reference is a warning (an error under -W), except references to
# third-party types, which have no inventory to resolve against in an offline build.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|pandas|pd|lightgbm|lgb|xgboost|xgb|sklearn|scipy|dask|distributed|matplotlib)(\..*)?"),
    (r"py:.*", r"(typing|collections|os|pathlib|numbers|dataclasses)\..*"),
    # numpy-style parameter types are prose ("array-like of shape (n_rows,)", "int64"):
    # lower-case words in a type field are not references; class names still are.
    (r"py:class", r"(?!gbrank)[a-z_].*|.*[^\w.].*"),
    # third-party classes named bare in parameter types
    (r"py:class", r"DataFrame|Series|Booster|Dataset|DMatrix|Client|Generator|RandomState|Path|Figure|Axes"),
]

# Optional dependencies that are not installed are mocked, so that the reference builds with
# the core dependencies and the docs extra alone.
autodoc_mock_imports = [
    name
    for name in ("dask", "distributed", "lightgbm", "xgboost", "matplotlib", "tqdm", "scipy")
    if importlib.util.find_spec(name) is None
]
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {
    "members": True,
    "show-inheritance": False,
    # scikit-learn's generated metadata-routing methods and BaseEstimator's plumbing
    "exclude-members": "set_fit_request, set_score_request, set_predict_request, "
    "get_metadata_routing, get_params, set_params",
}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
# Parameter types such as "array-like of shape (n_rows,)" are prose, not references.
napoleon_use_param = False
napoleon_use_rtype = False
napoleon_use_ivar = True

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

html_theme = "furo"
html_title = "gbrank"
pygments_style = "sphinx"


def _resolve_public_alias(app, env, node, contnode):
    """Resolve ``gbrank.listmle`` & co. to the object's canonical, documented location.

    The API pages document each object where it is defined (``gbrank.objectives.
    plackett_luce.listmle``), so that the docstrings' module-relative references resolve;
    the prose uses the public names users import. Only names that import to an object
    documented under its canonical name resolve, so a misspelt name still fails the build.
    """
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    if not target.startswith("gbrank."):
        return None
    module_name, _, attr = target.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError):
        return None
    if inspect.ismodule(obj):
        canonical = obj.__name__
    else:
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if not module or not qualname:
            return None
        canonical = f"{module}.{qualname}"
    if canonical == target:
        return None
    domain = env.get_domain("py")
    node = node.deepcopy()
    node["reftarget"] = canonical
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], canonical, node, contnode)


def setup(app):
    app.connect("missing-reference", _resolve_public_alias)
