package main

// The tests call the commands as they were called before cobra: through
// the whole command line (dispatch), so that they exercise the parsing,
// the single-dash spellings and the environment bridge as shipped.

func runCmd(name string, args []string) int {
	return dispatch(append([]string{name}, args...))
}

func runRun(args []string) int       { return runCmd("run", args) }
func runSubmit(args []string) int    { return runCmd("submit", args) }
func runResults(args []string) int   { return runCmd("results", args) }
func runStatus(args []string) int    { return runCmd("status", args) }
func runGC(args []string) int        { return runCmd("gc", args) }
func runPlugin(args []string) int    { return runCmd("plugin", args) }
func runReport(args []string) int    { return runCmd("report", args) }
func runReproduce(args []string) int { return runCmd("reproduce", args) }
func runProbe(args []string) int     { return runCmd("probe", args) }
