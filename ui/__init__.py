"""The app's one shared UI package: inputs, formatting, charts, cached catalog loaders, views.

Pages import from here and hold no arithmetic: they read the sidebar
(:mod:`ui.inputs`), call :mod:`planner`, and render with :mod:`ui.views`,
:mod:`ui.charts` and :mod:`ui.data` (table rows and series from planner calls); every
number passes through :mod:`ui.format`; :mod:`ui.catalog` caches the catalog loaders.
"""
