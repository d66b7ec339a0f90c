"""Dataset names across both registries: the packaged one (:mod:`lkm.data.registry`)
first, then the user's (:mod:`lkm.data.user`)."""

from __future__ import annotations

from lkm.data.registry import (
    DatasetInfo,
    list_datasets,
    load_registry,
    lookup_keys,
    normalize_name,
    packaged_owner,
)
from lkm.data.user import read_user_registry
from lkm.errors import DataError, did_you_mean


def _user_entry(name: str, user: dict[str, DatasetInfo]) -> DatasetInfo | None:
    """The user-registered dataset ``name`` is ('_' and '-' and case ignored), else None."""
    key = normalize_name(str(name))
    return next((info for n, info in user.items() if normalize_name(n) == key), None)


def check_spec_file_name(name: str, path: str) -> None:
    """A spec's file dataset may not take a packaged or user-registered name: an
    identifier in tables names one dataset."""
    owner = packaged_owner(name)
    if owner is None:
        found = _user_entry(name, read_user_registry())
        owner = found.name if found is not None else None
    if owner is not None:
        raise DataError(f"name {name!r} of {path} is already the registered dataset {owner!r}; "
                        "give the entry a name: of its own")


def dataset_info(name: str) -> DatasetInfo:
    """The entry of ``name`` or one of its aliases ('_' and '-' and case ignored): a
    packaged dataset or a user-registered one (a spec's ``path:`` entry is loaded from its
    path instead: :meth:`lkm.spec.DatasetSpec.load`)."""
    key = normalize_name(str(name))
    registered = lookup_keys().get(key)
    if registered is not None:
        return load_registry()[registered]
    user = read_user_registry()
    found = _user_entry(name, user)
    if found is None:
        choices = [k for info in list_datasets() for k in (info.name, *info.aliases)] + list(user)
        raise DataError(f"unknown dataset {name!r}{did_you_mean(str(name), choices)}")
    return found
