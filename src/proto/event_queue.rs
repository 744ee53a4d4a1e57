//! Events out to the layer above, one by one or all at once; a delivered
//! request taken frees its place in the receive buffer. Payloads come
//! back (`recycle`) for the next messages to land in.

use super::*;

impl<A: PeerAddr> Protocol<A> {
    /// The next event for the layer above. Taking a delivered request frees
    /// its place in the receive buffer.
    pub fn poll_event(&mut self) -> Option<Event<A>> {
        let ev = self.out.events.pop_front()?;
        if let Event::Delivered { channel, .. } = &ev {
            if *channel == wire::CHANNEL_REQUEST {
                self.queued_requests -= 1;
            }
        }
        Some(ev)
    }

    /// The event `poll_event` would take next, left where it is.
    pub fn peek_event(&self) -> Option<&Event<A>> {
        self.out.events.front()
    }

    /// The events `poll_event` would take, in order, left where they are.
    #[inline]
    pub fn events(&self) -> &VecDeque<Event<A>> {
        &self.out.events
    }

    /// Every queued event at once, as `poll_event` would take them one by
    /// one, swapped into `into` (which holds none): no event is moved. The
    /// delivered requests among them were all `queued_requests` counts.
    #[inline]
    pub fn take_events(&mut self, into: &mut VecDeque<Event<A>>) {
        debug_assert!(into.is_empty());
        debug_assert_eq!(
            self.queued_requests,
            self.out
                .events
                .iter()
                .filter(|ev| matches!(
                    ev,
                    Event::Delivered {
                        channel: wire::CHANNEL_REQUEST,
                        ..
                    }
                ))
                .count()
        );
        self.queued_requests = 0;
        std::mem::swap(&mut self.out.events, into);
    }

    #[cfg(any(test, feature = "testing"))] // the AM layer drains events in order (am/rma_target.rs)
    pub fn has_events(&self) -> bool {
        !self.out.events.is_empty()
    }

    /// Gives back the payload of a delivered event once the layer above is
    /// done with it: the next received message lands in it.
    #[inline]
    pub fn recycle(&mut self, payload: Vec<u8>) {
        self.out.pool.give(payload)
    }
}
