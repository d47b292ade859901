package cache

import "context"

// NewConnectPerOpClient is the resp engine's client factory of a
// connect-per-operation run on ep (with the run's defaults), for the
// external tests of its own socket.
func NewConnectPerOpClient(ep *Endpoint) (func(context.Context) (Client, error), error) {
	epc := *ep
	epc.RequestTimeout = orDefault(ep.RequestTimeout, defaultRequestTimeout)
	epc.ConnectTimeout = orDefault(ep.ConnectTimeout, defaultConnectTimeout)
	d, err := newDialer(&epc)
	if err != nil {
		return nil, err
	}
	e := &respEngine{d: d, raw: newRawAddr(d.ep.Addr)}
	if e.raw == nil {
		return nil, errNilContext
	}
	return e.newClient, nil
}
