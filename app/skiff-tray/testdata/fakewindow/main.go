// Command fakewindow stands in for skiff-window in skiff-tray's tests: it
// appends its arguments, one JSON array a line, to $SKIFF_FAKE_WINDOW_LOG.
package main

import (
	"encoding/json"
	"os"
)

func main() {
	f, err := os.OpenFile(os.Getenv("SKIFF_FAKE_WINDOW_LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		os.Exit(1)
	}
	defer f.Close()
	b, _ := json.Marshal(os.Args[1:])
	f.Write(append(b, '\n'))
}
