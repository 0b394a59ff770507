package coordinator

import "time"

// SetCompact makes every campaign of more than full tasks compact (ids
// only, tasks generated on demand) and reconcile publish window tasks at
// a time, until the returned restore is called: the large-campaign paths
// on a small campaign.
func SetCompact(full, window int) (restore func()) {
	f, w := fullTasks, submitWindow
	fullTasks, submitWindow = full, window
	return func() { fullTasks, submitWindow = f, w }
}

// SetSubmitWait makes Submit answer after d at most (its publication then
// goes on in the background), until the returned restore is called.
func SetSubmitWait(d time.Duration) (restore func()) {
	old := submitWait
	submitWait = d
	return func() { submitWait = old }
}
