package sweep

import (
	"fmt"
	"strings"
)

// CompareSpec is the compare block of a sweep file:
//
//	compare: {baseline: fcfs}
//
// Every policy variant is compared with the baseline at each scenario, pair
// by pair over the replications that share a seed (common random numbers:
// replication r of every policy sees the same jobs). Baseline is a policy
// name of the file, or a variant's label as the report's legends write it
// ("kill-smart K=21") when the policy has several variants; a bare name of
// a policy with several variants means its first variant.
type CompareSpec struct {
	Baseline string `mapstructure:"baseline" json:"baseline"`
}

// BaselineOf is the baseline a campaign's comparisons use: the compare
// block's, else "" (the first policy).
func (f *File) BaselineOf() string {
	if f == nil || f.Compare == nil {
		return ""
	}
	return f.Compare.Baseline
}

// checkCompare validates the compare block: a baseline is required and its
// policy name (the label's first word) must be one of the file's policies,
// so that a typo is an error at submission, not an empty column later.
func checkCompare(c *CompareSpec, pols []variant) error {
	if c == nil {
		return nil
	}
	b := strings.TrimSpace(c.Baseline)
	if b == "" {
		return fmt.Errorf("compare.baseline: required (a policy of the file, e.g. %q)", pols[0].name)
	}
	name, _, _ := strings.Cut(b, " ")
	var names []string
	for _, v := range pols {
		if strings.EqualFold(v.name, name) {
			return nil
		}
		if len(names) == 0 || names[len(names)-1] != v.name {
			names = append(names, v.name)
		}
	}
	return fmt.Errorf("compare.baseline: %s is not a policy of the file (policies: %s)", quoted(c.Baseline), strings.Join(names, ", "))
}
