"""Which tests face TensorBoard: the ones tests/run_all.sh runs again on the older stack.

The older-stack pass exists for what differs between the two stacks: TensorBoard (2.20 against the
newest) and protobuf (4.25 against the newest). Every other package, werkzeug among them, is the same
files in both (.venv-pb4 reads them from .venv). The product touches TensorBoard only at its edge: the
plugin API, the HTTP helpers and the error classes of the routes, the CLI and capture
(`profscope.plugin`, `params`, `cli`, `capture`, the tools' `routes`); it never imports protobuf.

A test faces TensorBoard when it uses a fixture that serves the plugin through TensorBoard's code
(`FACING_FIXTURES`: its server, its WSGI app), or the code it runs from its own module (the test
function, the module's fixtures it uses and the module's functions these call) names something
defined in TensorBoard, or in a profscope module that itself does. TensorBoard's error classes do not
count (`PLAIN_EXCEPTIONS`): raising one is plain Python on either version; what TensorBoard makes of
it, the HTTP answer, is its WSGI app's work, which the tests serving the plugin run. The judgement is
per test, not per module: a module of model tests with one test that builds the plugin runs that one
test again, not the other thirty. The other tests run the same product code on the same libraries in
both passes, so they run once.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Iterator

# Fixtures that serve the plugin: through TensorBoard's own server or its WSGI app.
FACING_FIXTURES = frozenset({"plugin_client", "tensorboard_server", "browser_page", "tab"})
STACK_PACKAGES = ("tensorboard",)
PLAIN_EXCEPTIONS = ("tensorboard.errors",)


def _module_name(value: object) -> str:
    if isinstance(value, types.ModuleType):
        return value.__name__
    name = getattr(value, "__module__", None)
    return name if isinstance(name, str) else ""


def _is_stack(name: str) -> bool:
    """`name` is a module of TensorBoard's that a test can reach."""
    return name.startswith(STACK_PACKAGES) and not name.startswith(PLAIN_EXCEPTIONS)


def _uses_stack(module: types.ModuleType) -> bool:
    """The module holds something defined in TensorBoard (but its error classes)."""
    return any(_is_stack(_module_name(v)) for v in vars(module).values())


def _global_names(code: types.CodeType) -> Iterator[str]:
    """The names `code` and the functions and lambdas nested in it look up (globals among them)."""
    yield from code.co_names
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _global_names(constant)


def _faces(value: object, loaded: dict[str, types.ModuleType]) -> bool:
    name = _module_name(value)
    if _is_stack(name):
        return True
    used = loaded.get(name) if name.startswith("profscope") else None
    return used is not None and _uses_stack(used)


def code_faces_tensorboard(
    functions: Iterable[Callable[..., object]], module: types.ModuleType, loaded: dict[str, types.ModuleType]
) -> bool:
    """Code of `module` (`functions`, and the module's own functions they call) uses TensorBoard,
    directly or through a profscope module that does, by a name bound in the module."""
    bound = vars(module)
    pending = list(functions)
    seen: set[int] = set()
    while pending:
        code = getattr(pending.pop(), "__code__", None)
        if code is None or id(code) in seen:
            continue
        seen.add(id(code))
        for name in _global_names(code):
            value = bound.get(name)
            if value is None:
                continue
            if _faces(value, loaded):
                return True
            if callable(value) and getattr(value, "__module__", None) == module.__name__:
                pending.append(value)
    return False


def faces_tensorboard(
    fixturenames: Iterable[str],
    functions: Iterable[Callable[..., object]],
    module: types.ModuleType,
    loaded: dict[str, types.ModuleType],
) -> bool:
    """A test faces TensorBoard: it uses a fixture serving the plugin, or the test function or its
    fixtures defined in `module` (`functions`) use TensorBoard (`code_faces_tensorboard`)."""
    if FACING_FIXTURES.intersection(fixturenames):
        return True
    return code_faces_tensorboard(functions, module, loaded)
