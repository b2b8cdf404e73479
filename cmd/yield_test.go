package cmd

// The tests' etcd runs in the test process: leases' pace.Yield would lower
// it, and every test after, to nice 10.
func init() { yield = func(int) error { return nil } }
