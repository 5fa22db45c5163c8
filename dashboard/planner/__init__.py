"""The Planner page's sections (dashboard/app_pages/planner.py draws them top to bottom): the preset and its knobs
(`controls`), the closed form they give at once (`closed_form`), then the tabs that run the simulator on the
same knobs: one run (`simulation`), many seeds (`monte_carlo`), a grid of settings (`sweeps`), and the recovery
strategies at scale and the warm standbys' break-even (`strategies`). What they share is in `common`; the
settings a sweep can vary, and the values typed for them, in `sweep_params`.

Importing these modules draws nothing: only the page file calls them.
"""
