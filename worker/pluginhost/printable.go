package pluginhost

import (
	"fmt"
	"regexp"
)

// nameRE is what a plugin's family, policy and parameter names may be:
// they are sweep-file keys and values, file and column names, and printed
// everywhere.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)

// checkName refuses a name a plugin declares that is not nameRE.
func checkName(what, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%s %q: not a name (letters, digits, '.', '_', '+', '-', at most 64, starting with a letter or digit)", what, name)
	}
	return nil
}
