"""A method variant named in one string, ``name@key=value,key=value`` (``evaluation.swap_methods``):
``occlusion_token@replacement=mean``, ``grad_x_input@reduction=l2``, ``sequential_ig@sequential_ig_steps=8``.
The keys are the token methods' own (``config.METHOD_KEYS``), each checked by ``AttributionConfig``.
No torch here: configs are validated at stage start-up."""

from __future__ import annotations

from xurs_pipeline.attribution.config import METHOD_KEYS, TOKEN_METHODS, AttributionConfig


def variant_name(entry: str) -> str:
    """The method a variant entry names (the part before ``@``)."""
    return entry.split("@", 1)[0]


def variant_config(entry: str, **defaults: object) -> AttributionConfig:
    """The config of one entry: ``defaults`` (keys the caller sets for the method when it reads them,
    e.g. the swap study's ``layer_ig_steps``) overridden by the entry's own keys. A malformed entry, a key
    the method does not read or a bad value raises ValueError in one line naming the entry."""
    name, _, spec = entry.partition("@")
    keys: dict[str, object] = {k: v for k, v in defaults.items() if name in METHOD_KEYS.get(k, ())}
    if "@" in entry:
        if name not in TOKEN_METHODS:
            raise ValueError(f"{entry!r}: only a token method of {list(TOKEN_METHODS)} takes @keys")
        for item in spec.split(","):
            key, eq, value = item.partition("=")
            if not eq or key not in METHOD_KEYS or not value:
                keys_from = list(METHOD_KEYS)
                raise ValueError(f"{entry!r}: write name@key=value[,key=value], keys from {keys_from}")
            field = AttributionConfig.__dataclass_fields__[key]
            try:
                keys[key] = int(value) if field.type in (int, "int") else value
            except ValueError:
                raise ValueError(f"{entry!r}: {key} must be an integer, got {value!r}") from None
    try:
        return AttributionConfig(method=name, **keys)  # type: ignore[arg-type]
    except ValueError as err:
        raise ValueError(f"{entry!r}: {err}") from None
