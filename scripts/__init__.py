"""The site's build scripts, one package: the record store (records), the snippet runner (runner), the recorder
(regenerate), the mkdocs hook (mkdocs_hooks), the renderers (plots, diagrams, notebooks) and publishing.

Run them from the repository root as modules: `python -m scripts.regenerate --help`.
"""
