"""`not_observed`: device activity was expected but the profile holds none.

Fires for a host with no device event although the profile says it had a device (Kineto
`deviceProperties`, XPlane device planes, device streams) or the host made device runtime calls.
A CPU-only capture that declares no device raises nothing: its device figures read "not
observed" with the reason.
"""

from __future__ import annotations

from profscope.analysis.answers import OverviewLink
from profscope.analysis.events import ROLE_RUNTIME
from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import Context, count


def check(ctx: Context) -> list[OverviewFinding]:
    out = []
    for host in ctx.hosts:
        events = host.events
        if events.has_device() or events.device_declared is None:
            continue
        runtime_calls = int((events.role == ROLE_RUNTIME).sum())
        out.append(
            OverviewFinding(
                kind="not_observed",
                host=events.name,
                title="Device activity not observed",
                observation=(
                    f"{events.device_declared}, but the profile holds no kernel, copy or memset: every device "
                    "figure reads not observed."
                ),
                hypothesis=(
                    "Device activity was not collected (the profiler ran without the CUDA/device activity, or "
                    "its device tracer failed to start), or the work ran on the CPU."
                ),
                next_check=(
                    "Profile again with device activity requested (torch.profiler activities=[CPU, CUDA]; "
                    "for XPlanes check the profiler's device tracer messages) and check that kernels appear; "
                    "check the tensors' device if they still do not."
                ),
                rule="a device is declared (or device runtime calls were made) and no device event was recorded",
                evidence=[count("device runtime calls", runtime_calls)],
                link=OverviewLink(host=events.name),
            )
        )
    return out


RULE = Rule("not_observed", check)
