"""firebase-admin (Python) sending through `attache relay`, as docs/relay.md gives it.

Usage: fcm_send.py RELAY SERVICE_ACCOUNT IMAGE_URL [send|send_each|send_each_async|android]

RELAY is the relay's base URL (https://relay.internal:8443). Trust its CA with the environment:
REQUESTS_CA_BUNDLE=ca.pem for send and send_each (requests, HTTP/1.1), SSL_CERT_FILE=ca.pem for
send_each_async (httpx, HTTP/2). Prints each message's name as FCM answered it, or its error.
`android` sends one Android-only message as Google's own image example writes it (the image in
android.notification, no APNs part): its image is replaced by the relay's validated copy too.
"""
import asyncio
import sys

import firebase_admin
from firebase_admin import credentials, messaging

relay, account, image = sys.argv[1:4]
mode = sys.argv[4] if len(sys.argv) > 4 else "send"

# firebase-admin has no host setting: its send URL is this class attribute, set before the first
# send. Every send method (send, send_each, send_each_async) uses it.
messaging._MessagingService.FCM_URL = relay + "/v1/projects/{0}/messages:send"
firebase_admin.initialize_app(credentials.Certificate(account))


def message(device):
    # mutable-content lets the relay enrich it: the iOS attachment and the Android image.
    return messaging.Message(
        fid=device,
        notification=messaging.Notification(title="Weekend sale", body="Up to 40% off", image=image),
        apns=messaging.APNSConfig(payload=messaging.APNSPayload(aps=messaging.Aps(mutable_content=True))),
    )


if mode == "send":
    print(messaging.send(message("device-1")))
elif mode == "android":
    # Android has no extension to gate on: the device downloads whatever URL it is given.
    print(messaging.send(messaging.Message(
        fid="android-1",
        notification=messaging.Notification(title="Weekend sale", body="Up to 40% off"),
        android=messaging.AndroidConfig(notification=messaging.AndroidNotification(image=image)),
    )))
else:
    messages = [message("device-%d" % i) for i in range(1, 4)]
    if mode == "send_each":
        batch = messaging.send_each(messages)
    else:
        batch = asyncio.run(messaging.send_each_async(messages, dry_run=False))
    for response in batch.responses:
        print(response.message_id if response.success else "error: %s" % response.exception)
