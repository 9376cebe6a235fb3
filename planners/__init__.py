"""Planners: each proposes the next macro step, choosing only from `PlanState.legal` (one file each)."""
