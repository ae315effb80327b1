"""Sphinx configuration: ``python -m sphinx -W -b html docs docs/_build/html``.

Needs the package installed (``pip install ".[docs]"``): the API reference is generated from
the docstrings of the installed module, compiled core included.
"""

import sys
from pathlib import Path

import budgetkernel

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "budgetkernel"
author = "budgetkernel developers"
release = version = budgetkernel.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "cpp_reference",
]
myst_enable_extensions = ["dollarmath", "amsmath"]
autosummary_generate = True
# The autosummary class template documents the members itself (with scikit-learn's
# BaseEstimator / ClassifierMixin members left to scikit-learn's documentation).
numpydoc_show_class_members = False
templates_path = ["_templates"]
exclude_patterns = ["_build", "generated/*.md", "auto_examples/*.ipynb", "auto_examples/*.py"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
html_theme = "pydata_sphinx_theme"
html_title = f"budgetkernel {release}"

# The gallery: every examples/plot_*.py runs at build time (each in seconds) and its figures
# and printed output go into the page. examples/embed is a C++ project, not a gallery section.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"make_reference\.py",
    "download_all_examples": False,
    "remove_config_comments": True,
    # By title: "A budgeted kernel SVM on a stream" (the quickstart) comes first.
    "within_subsection_order": "ExampleTitleSortKey",
    "abort_on_example_error": True,
}


def _skip_metadata_routing(app, what, name, obj, skip, options):
    # scikit-learn's metadata-routing methods (set_*_request, get_metadata_routing) belong to
    # its documentation: their docstrings cite its glossary and labels.
    if name == "get_metadata_routing" or (name.startswith("set_") and name.endswith("_request")):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_routing)
