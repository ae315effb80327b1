"""Sphinx configuration: ``python -m sphinx -W -b html docs docs/_build/html``.

Needs the package installed (``pip install ".[docs]"``): the API reference is generated from
the docstrings of the installed module, compiled core included; and MathJax 2 on the machine
(Debian / Ubuntu: ``apt-get install libjs-mathjax``), which the build copies into the pages so
that their maths renders offline (see _mathjax_source).

The build writes into the source tree only what .gitignore lists: autosummary's API pages
(docs/generated: Sphinx reads documents from the source directory only, so autosummary cannot
write them elsewhere) and sphinx-gallery's pages (docs/auto_examples, sg_execution_times.rst).
CI checks that `git status` is clean after the build.
"""

import os
import shutil
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
html_static_path = ["_static"]
html_css_files = ["budgetkernel.css"]
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


# MathJax is served from the built pages (_static/mathjax), not from a CDN: offline, or behind
# a firewall, maths loaded from a CDN shows as raw TeX. The pages need only MathJax 2's TeX
# input and CommonHTML output with its TeX web fonts: about 1.5 MB of the 54 MB package.
_MATHJAX_DIRS = ("/usr/share/javascript/mathjax",)  # Debian / Ubuntu's libjs-mathjax
_MATHJAX_PARTS = (
    "MathJax.js",
    "config/TeX-AMS_CHTML.js",
    "extensions",
    "jax/input/TeX",
    "jax/element",
    "jax/output/CommonHTML",
    "fonts/HTML-CSS/TeX/woff",
)


def _mathjax_source():
    """The MathJax 2 directory to copy into the build: $BUDGETKERNEL_MATHJAX, else Debian's.
    BUDGETKERNEL_MATHJAX=cdn loads MathJax from its CDN instead (the pages then need the
    network to show their maths): None."""
    setting = os.environ.get("BUDGETKERNEL_MATHJAX", "")
    if setting == "cdn":
        return None
    for directory in [setting] if setting else _MATHJAX_DIRS:
        if all(os.path.exists(os.path.join(directory, part)) for part in _MATHJAX_PARTS):
            return directory
    where = f"BUDGETKERNEL_MATHJAX={setting}" if setting else " or ".join(_MATHJAX_DIRS)
    # SystemExit, from config-inited: the message alone, where an exception (or SystemExit out
    # of conf.py itself) would be Sphinx's crash report
    raise SystemExit(
        f"docs/conf.py: MathJax 2 not found ({where}: no MathJax.js, or not its TeX input and "
        "CommonHTML output). The docs render their maths with a copy of MathJax inside the build, "
        "so that they read offline. Install it: on Debian or Ubuntu `apt-get install libjs-mathjax`; "
        "elsewhere set BUDGETKERNEL_MATHJAX to a MathJax 2 directory (the one holding MathJax.js), "
        "or BUDGETKERNEL_MATHJAX=cdn to load MathJax from its CDN when the pages are read."
    )


def _configure_mathjax(app, config):
    source = _mathjax_source()
    if source is None:
        return
    config.mathjax_path = "mathjax/MathJax.js?config=TeX-AMS_CHTML"  # relative to _static
    # MathJax 2 (Sphinx then loads it as version 2): the delimiters Sphinx writes, inside the
    # elements of class math also where myst-parser marks a page's sections tex2jax_ignore
    config.mathjax2_config = {
        "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]], "processClass": "math"}
    }
    app.connect("build-finished", lambda app, exception: _copy_mathjax(app, exception, source))


def _copy_mathjax(app, exception, source):
    if exception is None and app.builder.format == "html":
        target = Path(app.outdir) / "_static" / "mathjax"
        for part in _MATHJAX_PARTS:
            src, dest = Path(source) / part, target / part
            dest.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dest, dirs_exist_ok=True)
            else:
                shutil.copyfile(src, dest)


def _skip_metadata_routing(app, what, name, obj, skip, options):
    # scikit-learn's metadata-routing methods (set_*_request, get_metadata_routing) belong to
    # its documentation: their docstrings cite its glossary and labels.
    if name == "get_metadata_routing" or (name.startswith("set_") and name.endswith("_request")):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_routing)
    app.connect("config-inited", _configure_mathjax)
