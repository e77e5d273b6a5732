; written by make_geom_refs.py for livedrp's tests
clen = 0.05
photon_energy = 12398.4
adu_per_eV = 1.0
dim0 = %
dim1 = ss
dim2 = fs
data = /entry/data

q0/min_fs = 0
q0/max_fs = 15
q0/min_ss = 0
q0/max_ss = 11
q0/fs = +1.0x +0.0y
q0/ss = +0.0x +1.0y
q0/corner_x = -13.7
q0/corner_y = 1.2
q0/res = 10000.0

q1/min_fs = 16
q1/max_fs = 31
q1/min_ss = 0
q1/max_ss = 11
q1/fs = +0.0x -1.0y
q1/ss = +1.0x +0.0y
q1/corner_x = 3.1
q1/corner_y = 2.8
q1/res = 10000.0

q2/min_fs = 0
q2/max_fs = 15
q2/min_ss = 13
q2/max_ss = 24
q2/fs = +0.8660254037844386x +0.5y
q2/ss = -0.5x +0.8660254037844386y
q2/corner_x = -14.0
q2/corner_y = -18.0
q2/res = 10000.0

q3/min_fs = 16
q3/max_fs = 31
q3/min_ss = 13
q3/max_ss = 24
q3/fs = -1.0x +0.0y
q3/ss = +0.0x -1.0y
q3/corner_x = 40.0
q3/corner_y = -2.5
q3/res = 13333.333333333334

stub/min_fs = 32
stub/max_fs = 35
stub/min_ss = 0
stub/max_ss = 3
stub/fs = +1.0x +0.0y
stub/ss = +0.0x +1.0y
stub/corner_x = -2.0
stub/corner_y = -2.0
stub/res = 10000.0
stub/no_index = 1

badq0/min_fs = 3
badq0/max_fs = 5
badq0/min_ss = 2
badq0/max_ss = 4
badq0/panel = q0

badxy/min_x = 5.5
badxy/max_x = 9.5
badxy/min_y = -6.2
badxy/max_y = -2.2
