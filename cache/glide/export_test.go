package glide

import "time"

// SetCredentialsPoll makes clients ask Endpoint.Credentials every d and
// report each password they take to onRefresh, until the returned function
// restores the defaults.
func SetCredentialsPoll(d time.Duration, onRefresh func()) (restore func()) {
	oldPoll, oldRefreshed := credentialsPoll, refreshed
	credentialsPoll, refreshed = d, onRefresh
	return func() { credentialsPoll, refreshed = oldPoll, oldRefreshed }
}
