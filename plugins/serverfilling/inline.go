package serverfilling

// For inlining sdk.System's methods: see "Inlining" in package sdk's doc.
import _ "github.com/msjfarm/msjfarm/sim"
