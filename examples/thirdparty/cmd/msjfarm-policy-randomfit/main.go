// Command msjfarm-policy-randomfit serves the random-fit policy as an msjfarm
// plugin. Build it with `go build ./cmd/msjfarm-policy-randomfit` in this
// module and put the binary on the plugin search path.
package main

import (
	"example.com/randomfit"

	"github.com/msjfarm/msjfarm/sdk"
)

func main() { sdk.Serve("randomfit", "0.1.0", randomfit.Policies) }
