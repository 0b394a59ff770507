// Command msjfarm-policy-backfill is the plugin binary of the backfill
// policy family (EASY and conservative backfilling): msjfarm workers start
// it and run replications through it (see worker/pluginhost). Run by hand it
// only says that it is a plugin.
package main

import (
	"github.com/msjfarm/msjfarm/plugins/backfill"
	"github.com/msjfarm/msjfarm/sdk"
)

// version is the plugin's own version, recorded with every result.
const version = "0.1.0"

func main() { sdk.Serve("backfill", version, backfill.Policies) }
