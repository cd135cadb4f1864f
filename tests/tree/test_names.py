"""The tree's names say what they hold (tests/support/lint_imports.py, `just layers`): no two
modules share a basename unless they mean the same thing, and no folder holds more than
fifteen modules; a module added against either rule is found."""

from __future__ import annotations

from lint_imports import MAX_MODULES, build_tree, crowded_folders, repeated_names


def test_the_tree_as_it_is_keeps_both_rules(tmp_path) -> None:
    tree = build_tree(tmp_path)
    assert repeated_names(tree) == []
    assert crowded_folders(tree) == []


def test_a_second_module_of_one_name_is_found(tmp_path) -> None:
    tree = build_tree(tmp_path, copy=True)
    (tree / "docdex/server/answers/pipeline.py").write_text('"""Another pipeline."""\n')
    [found] = repeated_names(tree)
    assert found.startswith("pipeline.py: ")
    assert "docdex/indexer/run/pipeline.py" in found
    assert "docdex/server/answers/pipeline.py" in found


def test_the_names_that_mean_the_same_thing_may_repeat(tmp_path) -> None:
    tree = build_tree(tmp_path, copy=True)
    (tree / "docdex/indexer/run/settings.py").write_text('"""A run\'s settings."""\n')
    assert repeated_names(tree) == []


def test_a_folder_past_the_bound_is_found(tmp_path) -> None:
    tree = build_tree(tmp_path, copy=True)
    folder = tree / "docdex/markdown"
    present = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
    for n in range(MAX_MODULES + 1 - present):
        (folder / f"extra_dialect_{n}.py").write_text('"""One more."""\n')
    assert crowded_folders(tree) == [f"docdex/markdown: {MAX_MODULES + 1} modules"]
