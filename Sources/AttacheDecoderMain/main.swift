// attache-decode, the sandboxed decoder helper (DecoderHelper says what it does).
import AttacheDecoderHelper

DecoderHelper.run()
