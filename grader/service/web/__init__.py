"""The HTTP edge: routes parse input and call one library function; HTTP status codes live only here
(``http.status_of``)."""
