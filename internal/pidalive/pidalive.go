// Package pidalive tells whether a process recorded in a state file is
// still running, so that what it set up (routes, the system proxy) is
// restored only once it has died: a crash or kill -9 leaves its state
// behind, a live run keeps its own.
package pidalive
