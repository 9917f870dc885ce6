//! Serve an axum router on an ephemeral loopback port from a background thread; stopped on drop.

#![allow(dead_code)]

use std::net::SocketAddr;

use axum::Router;

pub struct Served {
    pub address: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub fn serve(router: Router) -> Served {
    let (address_sender, address_receiver) = std::sync::mpsc::channel();
    let (shutdown_sender, shutdown_receiver) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("mock runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind loopback");
            address_sender
                .send(listener.local_addr().expect("address"))
                .expect("send address");
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = shutdown_receiver.await;
                })
                .await
                .expect("serve");
        });
    });
    let address = address_receiver.recv().expect("mock address");
    Served {
        address,
        shutdown: Some(shutdown_sender),
        thread: Some(thread),
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(sender) = self.shutdown.take() {
            let _ = sender.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
