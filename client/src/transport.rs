//! NDJSON framing over a Unix socket for jsonrpsee's client: one JSON
//! message per line in each direction.

use futures::StreamExt;
use geminid_protocol::framing::MAX_MESSAGE_BYTES;
use jsonrpsee::core::client::{ReceivedMessage, TransportReceiverT, TransportSenderT};
use tokio::io::AsyncWriteExt;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

/// A transport failure.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("connection to geminid lost: {0}")]
    Io(#[from] std::io::Error),
    #[error("geminid sent a line longer than {MAX_MESSAGE_BYTES} bytes")]
    LineTooLong,
    #[error("geminid closed the connection")]
    Closed,
}

/// The writing half.
pub struct Sender(pub OwnedWriteHalf);

/// The reading half.
pub struct Receiver(pub FramedRead<OwnedReadHalf, LinesCodec>);

impl Receiver {
    pub fn new(read: OwnedReadHalf) -> Self {
        Receiver(FramedRead::new(
            read,
            LinesCodec::new_with_max_length(MAX_MESSAGE_BYTES),
        ))
    }
}

impl TransportSenderT for Sender {
    type Error = TransportError;

    async fn send(&mut self, mut msg: String) -> Result<(), Self::Error> {
        msg.push('\n');
        self.0.write_all(msg.as_bytes()).await?;
        Ok(())
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.0.shutdown().await?;
        Ok(())
    }
}

impl TransportReceiverT for Receiver {
    type Error = TransportError;

    async fn receive(&mut self) -> Result<ReceivedMessage, Self::Error> {
        match self.0.next().await {
            Some(Ok(line)) => Ok(ReceivedMessage::Text(line)),
            Some(Err(LinesCodecError::MaxLineLengthExceeded)) => Err(TransportError::LineTooLong),
            Some(Err(LinesCodecError::Io(e))) => Err(TransportError::Io(e)),
            None => Err(TransportError::Closed),
        }
    }
}
