//go:build long

package report

// With -tags long TestEditableFigures runs every figure's matplotlib script.
func init() { allFigures = true }
