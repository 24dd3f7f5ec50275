package link

import (
	"errors"

	"github.com/skiffvpn/skiff/core/node"
)

var errNotYet = errors.New("link: scheme not implemented yet")

func parseVMess(string) (*node.Node, error)   { return nil, errNotYet }
func parseSS(string) (*node.Node, error)      { return nil, errNotYet }
func parseTUIC(string) (*node.Node, error)    { return nil, errNotYet }
func parseAnyTLS(string) (*node.Node, error)  { return nil, errNotYet }
func formatVMess(*node.Node) (string, error)  { return "", errNotYet }
func formatSS(*node.Node) (string, error)     { return "", errNotYet }
func formatTUIC(*node.Node) (string, error)   { return "", errNotYet }
func formatAnyTLS(*node.Node) (string, error) { return "", errNotYet }
