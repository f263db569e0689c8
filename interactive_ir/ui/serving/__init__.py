"""What serving the page to many tabs needs, apart from the page itself: the image route, uploads,
tab lifetimes, session ids, the process's memory settings, the app log."""
