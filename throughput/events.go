package throughput

// startResult is what is known when the streams are connected.
func (s *session) startResult() *Result {
	t := s.t
	r := &Result{Role: role(s.server), Config: withoutHooks(t.cfg), Start: t.startT, Congestion: t.congestion,
		SndBufActual: t.sndBuf, RcvBufActual: t.rcvBuf, Cookie: s.cookieString(),
		LocalAddr: addrString(s.ctrl.LocalAddr()), RemoteAddr: addrString(s.ctrl.RemoteAddr()), ControlMSS: connMSS(s.ctrl)}
	for _, fs := range t.eng.streams {
		sr := StreamResult{ID: fs.id, Reverse: t.streamReverse(fs)}
		sr.LocalAddr, sr.RemoteAddr = fs.addrs()
		r.Streams = append(r.Streams, sr)
	}
	return r
}

// event hands ev to the test's OnEvent, if any.
func (s *session) event(ev Event) {
	if s.cfg.OnEvent == nil {
		return
	}
	ev.Cookie = s.cookieString()
	s.cfg.OnEvent(ev)
}

// finalEvents reports how the session ended: EventError when it failed,
// then EventEnd, once its test has started (its settings were agreed).
func (s *session) finalEvents(res *Result, err error) {
	if s.t == nil {
		return
	}
	if err != nil {
		s.event(Event{Kind: EventError, Err: err})
	}
	s.event(Event{Kind: EventEnd, Result: res})
}
