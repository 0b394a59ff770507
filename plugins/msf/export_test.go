package msf

// ForceWide makes MSF.Init take the wide path (sdk.NeedQueues) whatever the
// number of needs, so that the tests check both paths against the same
// reference. The tests of this package do not run in parallel.
func ForceWide(on bool) { forceWide = on }
