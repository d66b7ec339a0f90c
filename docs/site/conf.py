"""Sphinx configuration of lkm's documentation site (``make docs``).

The user guide and the reproductions are the Markdown files of ``docs/``, included (one
source); this folder mirrors their layout (``docs/site/specs.md`` includes ``docs/specs.md``,
``docs/site/reproductions/lpl.md`` includes ``docs/reproductions/lpl.md``), so their links
to each other resolve as written. Their links to other repository files (``../lkm/...``,
``../configs/...``) become links to the repository's source (:func:`link_repository_files`).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli, a dependency of pytest
    import tomli as tomllib

from docutils import nodes
from pygments.lexers.special import TextLexer
from sphinx.application import Sphinx
from sphinx.ext import autosummary
from sphinx.transforms.post_transforms import SphinxPostTransform

SITE = Path(__file__).resolve().parent
DOCS = SITE.parent  # the Markdown this site includes, laid out as the site is
REPO = DOCS.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SOURCE_URL: str = PROJECT["urls"]["Source"]

project = "lkm"
author = "the lkm authors"
copyright = "the lkm authors"
release = version = PROJECT["version"]

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "sphinx_copybutton",
    "sphinxcontrib.typer",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_templates", "**/README.md", "sg_execution_times.rst"]
templates_path = ["_templates"]

# -- the pages: Markdown, API, examples ------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 4  # the Markdown links to `file.md#a-heading` as GitHub renders them

autosummary_generate = True
autosummary_ignore_module_all = False  # a module page lists its __all__ (lkm.api)
autodoc_typehints = "none"  # numpydoc renders the types from the docstrings
# The API index shows each docstring's first sentence; the docstrings cite "Sec. 5", "eq. 3",
# "Fig. 2" of the papers, where autosummary would end the sentence (it knows "et al." only).
autosummary.WELL_KNOWN_ABBREVIATIONS = tuple(
    {*autosummary.WELL_KNOWN_ABBREVIATIONS, "Sec.", "Secs.", "eq.", "Eq.", "Eqs.", "Fig.", "Figs.", "cf."}
)
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False  # types as written; no intersphinx (offline builds)

sphinx_gallery_conf = {
    "examples_dirs": [str(REPO / "examples")],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",  # every plot_*.py runs at build time
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "reset_modules": ("matplotlib", "seaborn"),
    "backreferences_dir": "api/generated/backreferences",
    "doc_module": ("lkm",),
    "reference_url": {"lkm": None},
    "download_all_examples": False,
    "remove_config_comments": True,
}


# -- HTML --------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"lkm {version}"
toc_object_entries_show_parents = "hide"  # the page ToC lists "fit", not "lkm.methods.X.fit"
html_theme_options = {
    "logo": {"text": "lkm — local kernel machines"},
    "github_url": SOURCE_URL,
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
}
html_sidebars = {"index": [], "getting-started": [], "cli": []}  # pages without sections beside them
html_show_sourcelink = False
html_copy_source = False


class RepositoryFileLinks(SphinxPostTransform):
    """Links from the included Markdown to repository files that are no pages of the site
    (``../lkm/methods/svm.py``, ``../configs/x.yaml``, ``../tests/...``) become links to the
    file in the repository's source (``SOURCE_URL/blob/main/...``), not missing references."""

    default_priority = 5  # before Sphinx resolves the references (ReferencesResolver, 10)

    def run(self, **kwargs: object) -> None:
        for node in list(self.document.findall(nodes.Element)):
            if node.tagname not in ("pending_xref", "download_reference"):
                continue
            if node.tagname == "pending_xref" and node.get("reftype") != "myst":
                continue
            target = node.get("reftarget", "")
            repo_path = repository_path(self.env.docname, target)
            if repo_path is None:
                continue
            kind = "tree" if (REPO / repo_path).is_dir() else "blob"
            fragment = target.partition("#")[2]  # a line anchor such as #L10 stays
            url = f"{SOURCE_URL}/{kind}/main/{repo_path}" + (f"#{fragment}" if fragment else "")
            link = nodes.reference("", "", internal=False, refuri=url)
            link += node.children
            node.replace_self(link)


def repository_path(docname: str, target: str) -> str | None:
    """The repository path a relative link of page ``docname`` names, when it is a file or
    folder of the repository outside the site's pages (else None). The site's folder stands
    for ``docs/``, so a link resolves as it does in the included Markdown."""
    target = target.split("#", 1)[0]
    if not target or "://" in target or target.startswith(("/", "mailto:")):
        return None
    site_relative = posixpath.normpath(posixpath.join(posixpath.dirname(docname), target))
    repo_relative = posixpath.normpath(posixpath.join("docs", site_relative))
    if repo_relative.startswith("..") or not (REPO / repo_relative).exists():
        return None
    if (SITE / site_relative).exists() and not site_relative.startswith(".."):
        return None  # a page (or file) of the site itself
    return repo_relative


def skip_scikit_learn_members(app: Sphinx, what: str, name: str, obj: object, skip: bool,
                              options: object) -> bool | None:
    """Leave out the members an estimator inherits from scikit-learn (``get_params``,
    ``score``, the generated ``set_*_request`` of metadata routing): scikit-learn documents
    them, and their docstrings refer to scikit-learn's own glossary and labels."""
    defined_in = getattr(obj, "__module__", None) or ""
    if defined_in.split(".")[0] == "sklearn" or (name.startswith("set_") and name.endswith("_request")):
        return True
    return None


def setup(app: Sphinx) -> dict[str, bool]:
    app.add_post_transform(RepositoryFileLinks)
    app.connect("autodoc-skip-member", skip_scikit_learn_members)
    # docs/architecture.md's import graph is a ```mermaid block (drawn by GitHub); shown as text here
    app.add_lexer("mermaid", TextLexer)
    os.environ.setdefault("MPLBACKEND", "Agg")
    return {"parallel_read_safe": True}
