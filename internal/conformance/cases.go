package conformance

// Cases returns every case, in a fixed order.
func Cases() []Case {
	var all []Case
	for _, group := range [][]Case{
		pathCases(), errorCases(), statCases(), sequentialCases(),
		ephemeralCases(), watchCases(), multiCases(), sessionCases(), moreCases(),
		ReapCases(),
		aclCases(),
		pwatchCases(),
	} {
		all = append(all, group...)
	}
	return all
}
