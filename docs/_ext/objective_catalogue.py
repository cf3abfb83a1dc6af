"""Sphinx directives that list the objectives from :mod:`gbrank.objectives.registry`.

A new objective is its module, its registry entry and its guide page: the table of losses,
the table of contents of the objectives section and the API page are written from the
registry at build time, so none of them is edited by hand.

* ``objectives-table`` (MyST): the table of losses, one row per registered objective with a
  guide, linking its page and its factory.
* ``objectives-toctree`` (MyST): a table of contents of the guide pages under the current
  document's folder, in registry order, followed by the pages in the directive's content.
* ``objective-modules`` (reST): per guide page, a section titled as the page, documenting
  the public names (``__all__``) of every module that defines a registered factory.
"""

from __future__ import annotations

import importlib
import posixpath
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

from gbrank.objectives import registry

HEADER = ("objective", "factory", "paper", "kind", "hessian", "cost per query")


def _guided() -> list[registry.ObjectiveSpec]:
    return [spec for spec in registry.specs().values() if spec.guide is not None]


def _page_title(srcdir: str, page: str) -> str:
    """The first heading of a guide page (Markdown ``# Title`` or a reST over/underline)."""
    for suffix in (".md", ".rst"):
        path = Path(srcdir, page + suffix)
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines):
                if line.startswith("# "):
                    return line[2:].strip()
                if number and line and set(line) <= set("=-~*#") and lines[number - 1].strip():
                    return lines[number - 1].strip()
    raise ValueError(f"the guide page {page!r} of a registered objective has no title (or does not exist)")


class _Parsed(SphinxDirective):
    """A directive whose output is text in the current document's own markup."""

    def parse(self, lines: list[str]) -> list[nodes.Node]:
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=self.get_source_info()[0]), self.content_offset, container)
        return container.children


class ObjectivesTable(_Parsed):
    """The table of losses."""

    def run(self) -> list[nodes.Node]:
        here = posixpath.dirname(self.env.docname)
        rows = [f"| {' | '.join(HEADER)} |", "|" + "---|" * len(HEADER)]
        for spec in _guided():
            guide = spec.guide
            link = posixpath.relpath(guide.page, here or ".") + ".md"
            cells = (f"[{guide.title}]({link})", f"{{func}}`gbrank.{spec.name}`", guide.paper, guide.kind,
                     guide.hessian, guide.cost)
            rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        return self.parse(rows)


class ObjectivesToctree(_Parsed):
    """The guide pages of the current folder, then the content's pages."""

    has_content = True
    option_spec = {"maxdepth": int}

    def run(self) -> list[nodes.Node]:
        here = posixpath.dirname(self.env.docname)
        pages: list[str] = []
        for spec in _guided():
            folder, page = posixpath.split(spec.guide.page)
            if folder == here and page not in pages:
                pages.append(page)
        pages += [line.strip() for line in self.content if line.strip() and line.strip() not in pages]
        lines = ["```{toctree}", f":maxdepth: {self.options.get('maxdepth', 1)}", "", *pages, "```"]
        return self.parse(lines)


class ObjectiveModules(SphinxDirective):
    """One section per guide page, documenting the modules of its objectives."""

    def run(self) -> list[nodes.Node]:
        by_page: dict[str, list[str]] = {}
        for spec in registry.specs().values():
            page = spec.guide.page if spec.guide is not None else spec.module
            modules = by_page.setdefault(page, [])
            if spec.module not in modules:
                modules.append(spec.module)
        lines: list[str] = []
        for page, modules in by_page.items():
            title = _page_title(self.env.srcdir, page) if page in {s.guide.page for s in _guided()} else page
            lines += [title, "-" * len(title), ""]
            for module in modules:
                public = getattr(importlib.import_module(module), "__all__", None)
                if public is None:
                    raise ValueError(f"{module} defines a registered objective but no __all__ to document")
                lines += [f".. automodule:: {module}", f"   :members: {', '.join(public)}", ""]
        container = nodes.section()
        container.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source=self.get_source_info()[0]), container)
        return container.children


def setup(app):
    app.add_directive("objectives-table", ObjectivesTable)
    app.add_directive("objectives-toctree", ObjectivesToctree)
    app.add_directive("objective-modules", ObjectiveModules)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
