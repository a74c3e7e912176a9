# cmake -DIN=file.py -DOUT=file.inc -P embed.cmake: the file as a C array,
# `static const char zflow_support_py[]`, NUL-terminated.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n"
       bytes "${bytes}")
file(WRITE ${OUT} "/* generated from zflow_support.py by embed.cmake */\n"
                  "static const char zflow_support_py[] = {\n${bytes}0x00};\n")
