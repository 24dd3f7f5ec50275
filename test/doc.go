// Package test holds Skiff's end-to-end tests and benchmarks: it builds the
// skiff binary and real peers (sing-box, from the Go module proxy), runs them
// on loopback or in network namespaces it creates, and drives traffic
// through them. It is a module of its own so that what it needs stays out of
// the product's go.mod.
package test
