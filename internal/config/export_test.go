package config

// KeyTable and Lookup expose keyTable and lookup to the external test
// package (config_test), whose tests import packages that import config
// (sink reads TLS files and JAAS options through it).
var (
	KeyTable = keyTable
	Lookup   = lookup
)
