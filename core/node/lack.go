package node

import "fmt"

// Feature is a kind of setting a node may need that Skiff lacks. Its values
// are saved in profiles, cross the API and name translation keys
// (unsupported.protocol, …): do not rename them.
type Feature string

// Features a node may need.
const (
	FeatureProtocol  Feature = "protocol"  // the protocol itself (Value: its name)
	FeatureTransport Feature = "transport" // a transport or a transport combination (Value: its name)
	FeatureMultiplex Feature = "multiplex" // a multiplexer over the connection (Value: its name)
	FeatureCipher    Feature = "cipher"    // an encryption method (Value: its name)
	FeaturePlugin    Feature = "plugin"    // a Shadowsocks plugin or its mode (Value: its name)
	FeatureOption    Feature = "option"    // any other setting (Value: the setting, as the link names it)
	FeatureInfo      Feature = "info"      // no server at all: a line of the provider's information (traffic left, expiry) listed as a node
)

// Lack is what of a node Skiff cannot dial, as data for front ends that
// say it in their own words: the kind of setting and its value.
type Lack struct {
	Feature Feature `json:"feature"`
	Value   string  `json:"value,omitempty"`
}

// UnsupportedError is a protocol constructor's error for a node that needs
// something Skiff lacks. Its text is the whole English story.
type UnsupportedError struct {
	Lack Lack
	Err  error
}

func (e *UnsupportedError) Error() string { return e.Err.Error() }
func (e *UnsupportedError) Unwrap() error { return e.Err }

// Unsupportedf returns an *UnsupportedError for feature f with value v,
// whose text is format with args (fmt.Errorf: %w wraps).
func Unsupportedf(f Feature, v string, format string, args ...any) error {
	return &UnsupportedError{Lack: Lack{Feature: f, Value: v}, Err: fmt.Errorf(format, args...)}
}
