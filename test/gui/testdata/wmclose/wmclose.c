/* wmclose asks an X window to close, as a window manager's close button
 * does: a WM_DELETE_WINDOW client message (xdotool's windowclose destroys
 * the window instead, and no window manager runs under Xvfb).
 * Usage: DISPLAY=:N wmclose WINDOW-ID */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <X11/Xlib.h>

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: wmclose WINDOW-ID\n");
		return 2;
	}
	Display *d = XOpenDisplay(NULL);
	if (d == NULL) {
		fprintf(stderr, "wmclose: cannot open the display\n");
		return 1;
	}
	Window w = (Window)strtoul(argv[1], NULL, 0);
	XEvent ev;
	memset(&ev, 0, sizeof ev);
	ev.xclient.type = ClientMessage;
	ev.xclient.window = w;
	ev.xclient.message_type = XInternAtom(d, "WM_PROTOCOLS", False);
	ev.xclient.format = 32;
	ev.xclient.data.l[0] = XInternAtom(d, "WM_DELETE_WINDOW", False);
	ev.xclient.data.l[1] = CurrentTime;
	if (!XSendEvent(d, w, False, NoEventMask, &ev)) {
		fprintf(stderr, "wmclose: XSendEvent failed\n");
		return 1;
	}
	XSync(d, False);
	XCloseDisplay(d);
	return 0;
}
