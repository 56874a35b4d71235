package wiresim

// DrawPlan draws the plan of a seed of sc, with sc's defaults.
func DrawPlan(sc Scenario, seed uint64) Plan {
	sc.defaults()
	return drawPlan(&sc, seed)
}
