package node

// TransportXHTTP is Xray's XHTTP transport (SplitHTTP's successor). Its
// own settings are in Transport.XHTTP; Host, Path and Headers are the
// Transport's.
const TransportXHTTP = "xhttp"

// XHTTP is the XHTTP transport's settings beyond Host, Path and Headers,
// in the form share links carry them.
type XHTTP struct {
	// Mode is "auto" (or empty), "packet-up", "stream-up" or "stream-one".
	Mode string `json:"mode,omitempty"`
	// Extra is a JSON object of further Xray xhttpSettings (xPaddingBytes,
	// noGRPCHeader, scMaxEachPostBytes, xmux, …), kept as written so that
	// a share link goes out as it came in; core/transport/xhttp reads it.
	Extra string `json:"extra,omitempty"`
}
