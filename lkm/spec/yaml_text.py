"""Bounded reading of spec text: file size, encoding, YAML nesting, alias expansion and
duplicate keys are checked before anything is built, each problem a one-line SpecError."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import BaseResolver, Resolver

from lkm.errors import SpecError
from lkm.spec.names import short_repr

# -- limits on hostile or runaway specs -------------------------------------------
#: Largest spec file read (bytes).
MAX_SPEC_BYTES = 1_000_000
#: Most YAML nodes a spec may expand to, counting every alias as the nodes it stands for.
MAX_YAML_NODES = 100_000
#: Deepest nesting of mappings and lists in a spec.
MAX_YAML_DEPTH = 50


class _SpecYAMLError(yaml.MarkedYAMLError):
    """A spec that is well-formed YAML but breaks a limit or has a duplicate key."""


class _Bounded:
    """Composer and constructor hooks of the spec loader: nesting depth, alias expansion
    and duplicate mapping keys.

    Every node's *expanded* size (the nodes it would have with every alias written out)
    is counted as it is composed, an alias adding the size of the node it refers to; the
    document fails as soon as the total passes :data:`MAX_YAML_NODES`, so an alias bomb
    ("billion laughs") stops after at most that many steps, before anything is built.
    """

    def __init__(self) -> None:
        self._depth = 0
        self._total = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):  # type: ignore[attr-defined]
            event = self.peek_event()  # type: ignore[attr-defined]
            node = super().compose_node(parent, index)  # type: ignore[misc]
            size = self._sizes.get(id(node))
            if size is None:
                raise _SpecYAMLError(None, None, f"alias *{event.anchor} is used inside the node it names (a recursive alias)",
                                     event.start_mark)
            self._count(size, event.start_mark)
            return node
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            raise _SpecYAMLError(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                                 self.peek_event().start_mark)  # type: ignore[attr-defined]
        before = self._total
        self._count(1, self.peek_event().start_mark)  # type: ignore[attr-defined]
        node = super().compose_node(parent, index)  # type: ignore[misc]
        self._sizes[id(node)] = self._total - before
        self._depth -= 1
        return node

    def _count(self, n: int, mark: Any) -> None:
        self._total += n
        if self._total > MAX_YAML_NODES:
            raise _SpecYAMLError(None, None, f"the spec expands to more than {MAX_YAML_NODES} values "
                                 "(aliases counted as what they stand for)", mark)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<: *base` merges keys; the mapping's own keys override them
                key = self.construct_object(key_node, deep=deep)  # type: ignore[attr-defined]
                try:
                    first = seen.get(key)
                except TypeError:
                    continue  # unhashable: the base constructor reports it
                if first is not None:
                    raise _SpecYAMLError(None, None, f"duplicate key {short_repr(key)} (first on line {first + 1})",
                                         key_node.start_mark)
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]


if getattr(yaml, "__with_libyaml__", False):
    from yaml._yaml import CParser

    class _SpecLoader(_Bounded, Composer, CParser, SafeConstructor, Resolver):
        """Safe loading with libyaml's parser, Python's composer (for the limits of
        :class:`_Bounded`) and YAML 1.2 floats: ``1e-8`` is a number, not the string
        '1e-8' that YAML 1.1 (which requires a dot) makes of it."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            _Bounded.__init__(self)

else:  # pragma: no cover - PyYAML without libyaml

    class _SpecLoader(_Bounded, yaml.SafeLoader):  # type: ignore[no-redef]
        """PyYAML's safe loader with the limits of :class:`_Bounded` and YAML 1.2 floats."""

        def __init__(self, stream: str) -> None:
            yaml.SafeLoader.__init__(self, stream)
            _Bounded.__init__(self)


_SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$"),
    list("-+0123456789."),
)



def _without_sexagesimal(loader: type[BaseResolver]) -> None:
    """YAML 1.2 numbers only: YAML 1.1 reads ``1:10:3`` as the base-60 integer 4203, so
    a grid written without its decimal point (``sigma: 1:10:3``) became one silent value.
    With this, a scalar holding ``:`` is never an int or a float (it stays a string)."""
    numbers = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
    loader.yaml_implicit_resolvers = {
        first: [(tag, re.compile(r"(?!.*:)" + rx.pattern, rx.flags) if tag in numbers else rx) for tag, rx in resolvers]
        for first, resolvers in loader.yaml_implicit_resolvers.items()
    }


_without_sexagesimal(_SpecLoader)


def load_yaml(text: str, source: str = "<spec>") -> Any:
    """Parse spec text (safe tags only, within the limits of :class:`_Bounded`); every
    problem is a one-line SpecError naming ``source`` and the line."""
    try:
        loader = _SpecLoader(text)  # what yaml.load(text, Loader=_SpecLoader) does (its stub takes only PyYAML's own loaders)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}:" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        what = "" if isinstance(exc, _SpecYAMLError) else " malformed YAML:"
        if "maximum nesting depth" in problem:  # libyaml >= 0.2.6 (PyYAML 6.0.4) stops at 1000 levels first
            problem, what = f"nested more than {MAX_YAML_DEPTH} levels deep", ""
        raise SpecError(f"{source}:{where}{what} {problem}".replace("\n", " ")) from None
    except (ValueError, OverflowError, RecursionError) as exc:  # e.g. an int of 5000 digits
        raise SpecError(f"{source}: malformed YAML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def read_spec_text(path: Path) -> str:
    """The text of a spec file: at most :data:`MAX_SPEC_BYTES`, UTF-8, no NUL."""
    if path.is_dir():
        raise SpecError(f"{path}: is a folder, not a spec file")
    if not path.is_file():
        raise SpecError(f"{path}: no such spec file")
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec file: {exc.strerror or exc}") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: larger than {MAX_SPEC_BYTES} bytes; a spec is a short text file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte offset {exc.start})") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise SpecError(f"{path}: line {line}: contains a NUL character (not a text file?)")
    return text.removeprefix("\ufeff")
