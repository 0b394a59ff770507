package pluginhost

import "testing"

// TestCheckName: a plugin's names are plain names.
func TestCheckName(t *testing.T) {
	for _, bad := range []string{"", "-x", "a b", "fcfs\x1b[31m", "a/b", "é", string(make([]byte, 65))} {
		if checkName("policy name", bad) == nil {
			t.Errorf("checkName(%q) accepted", bad)
		}
	}
	for _, good := range []string{"fcfs", "msfq-copy", "cap-fit", "serverfilling-srpt", "X1.2_b+c"} {
		if err := checkName("policy name", good); err != nil {
			t.Errorf("checkName(%q): %v", good, err)
		}
	}
}
