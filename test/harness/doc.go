// Package harness runs Skiff against real peers for the end-to-end tests and
// the benchmark: it builds the skiff binary and sing-box, makes a throw-away
// certificate, starts and stops processes with their output captured, writes
// sing-box configurations, serves echo, HTTP and sink/source endpoints on
// loopback, and speaks SOCKS5 (TCP CONNECT and UDP ASSOCIATE) to a proxy.
//
// Everything listens on loopback only. Functions that take a testing.TB stop
// what they started with t.Cleanup; the others return something with a Close
// or Stop method that the caller owns.
package harness
